export default {name:'parameters.PARAM_P4_9',value:[{group:'P4' number:9,use:'v'}]};
