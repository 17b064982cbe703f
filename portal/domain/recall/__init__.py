"""All of recall's ranking: meaning and words, their fusion, and the per-place index the stores keep."""
