"""Support code for the test suite (server launchers); not part of any distribution."""
