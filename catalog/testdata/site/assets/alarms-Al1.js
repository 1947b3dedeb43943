export default {'38':'No fuel','ERROR_BRAK_PALIWA':'No fuel'};
