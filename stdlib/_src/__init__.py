"""Private helpers under the module names JAX's documentation imports them from
(``jax._src.util.safe_map``); not part of pyree's API."""
