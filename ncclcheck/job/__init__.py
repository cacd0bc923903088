"""The job model every verdict reasons over, built from evidence."""
