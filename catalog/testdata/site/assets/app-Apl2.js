export default {'one':{'diodeState':{'on':'W\u0142\u0105czone','off':'Wy\u0142\u0105czone'},'burnerState':{'0':'Stop','1':'Praca'},'boilerStatus':{'name':'Status kot\u0142a'}}};
