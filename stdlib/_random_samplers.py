"""More samplers of ``pyree.random`` (work in progress); re-exported by ``pyree.random``."""
__all__: list = []


def weighted_choice_indices(k0, k1, n: int, count: int, replace: bool, p):
    """``count`` indices into ``range(n)`` drawn with probabilities ``p`` (called by
    ``random.choice`` with ``p=``; ``k0``, ``k1`` are the key's words)."""
    raise NotImplementedError("choice with p= is not implemented yet")
