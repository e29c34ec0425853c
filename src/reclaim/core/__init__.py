"""The core every system runs on: resource axes, columnar state, the view controllers read, the
control interface, the event engine and its clocks.

Nothing here imports from the rest of reclaim but :mod:`reclaim.errors`.
"""
