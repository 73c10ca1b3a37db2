"""The model side of the decoder: what turns token ids into logits.

- `adapter_protocol.py`: `ModelAdapter`, the Protocol every model adapter satisfies (docs/conventions.md)
- `adapters.py`: `adapter_for`, the Hugging Face adapters (causal and encoder-decoder)
- `hf_model.py`: loading a Hugging Face model; `packed_model.py`: MKL-packed linear layers
- `cache.py`: the key/value cache reordered across beams
- `shortlist.py`, `used_rows.py`: the output layer over the allowed tokens only
"""
