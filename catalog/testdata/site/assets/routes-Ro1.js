export default {'modules':{'menu':{'boiler':'Boiler settings','dhw':'Hot water','service':'Service','thermostat':{'pump':'Pump'}}}};
