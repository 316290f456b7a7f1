"""The scenario library: packages kept file for file in the database."""
