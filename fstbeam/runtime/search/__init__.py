"""The beam search: one step after another over a batch of inputs.

- `engine.py`: `SearchEngine`, the streaming batched beam search (inputs leave and refill the batch)
- `step.py`: one search step as named stages (mask, masked top-k, candidates, DBA, next beam)
- `beam.py`: the beam's tensors; `pool.py`: finished hypotheses, n-best and optimal stopping; `stops.py`: stop strings
- `dba.py`: Dynamic Beam Allocation (banks by constraint progress); `tracks.py`: the plain track
- `tables.py`, `table_lookups.py`: the compiled constraints on the device and the per-token advance
- `schedule.py`: the least-advanced schedule; `continuous.py`: a queue that may say "nothing now"
- `scoring.py`, `length_target.py`: length reward and the length target; `guards.py`: output guards
"""
