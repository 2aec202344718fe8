"""The ``advisor`` command line: thin click commands over the library."""
