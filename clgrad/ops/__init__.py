"""The op families (docs/internals.md, layer 5) and the launch layer below them (_util)."""
