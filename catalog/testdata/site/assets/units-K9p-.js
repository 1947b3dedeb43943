export default {'0':'\x20','1':'\u00b0C','5':'\u00b0C','31':'kW','17':{'0':'Wy\u0142\u0105czony','1':'W\u0142\u0105czony'},'202':{'0':'Wy\u0142\u0105czony'}};
