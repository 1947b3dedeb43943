const PARAM_P4_7='Moc\x20kot\u0142a',e={'PARAM_P4_1':'Temperatura kot\u0142a','PARAM_P4_7':PARAM_P4_7,'PARAM_66':'Zadana temperatura kot\u0142a','STATUS_P5_10':'Pompa CO'};export{e as default};
