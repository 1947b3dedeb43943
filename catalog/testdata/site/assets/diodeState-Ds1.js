export default {'on':'On'};
