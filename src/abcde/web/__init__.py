"""The local web apps: judging (people judge pairs) and exploration (slice and group the
importance sample)."""
