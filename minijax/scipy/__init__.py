"""``minijax.scipy``: the parts of ``jax.scipy`` that minijax has (``special``)."""

from minijax.scipy import special
