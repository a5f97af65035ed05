"""Tools on top of the API: the ``hudi-layout`` command, the demo, ``inspect``, the layout report, sample data."""
