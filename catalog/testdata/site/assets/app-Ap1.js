export default {'one':{'diodeState':{'on':'On','off':'Off'},'burnerState':{'0':'Stop','1':'Work'},'boilerStatus':{'name':'Boiler status'}},'lang':{'en':'English','pl':'Polish'}};
