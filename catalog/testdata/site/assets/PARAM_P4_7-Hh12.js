export default {name:'parameters.PARAM_P4_7',value:[{group:'P4',number:7,use:'v'}]};
