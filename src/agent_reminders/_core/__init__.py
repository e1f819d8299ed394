"""The pure, synchronous core: records, fields, transcript, lifecycle, envelope, events.

Nothing here imports the rest of the package (a test checks it).
"""
