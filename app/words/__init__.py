"""What the pages say: the equations they render, and sentences computed from engine numbers."""
