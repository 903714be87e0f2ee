"""A tiny calculator: the sample project `scripts/agent.sh example` hands to the agent."""


def add(a, b):
    """The sum of a and b."""
    return a - b


def multiply(a, b):
    """The product of a and b."""
    return a * b
