"""``pyree.nn.initializers``: JAX's parameter initializers (work in progress)."""
__all__: list = []
