const MAINMENU_MENU_TERMOSTATU='Thermostats';export{MAINMENU_MENU_TERMOSTATU as default};
