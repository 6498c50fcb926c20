"""The lecture features: the guided tour, presentation mode, the share box."""
