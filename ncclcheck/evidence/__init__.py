"""Evidence: inputs found and read, text logs parsed, flight-recorder dumps decoded."""
