"""Files every layer reads: the cache folder, UTF-8 text files, the embedded default model's files."""
