"""A training step in JAX/Flax with optax: embedding, LSTM (a Python loop over the
sequence, unrolled in the jaxpr), linear head, cross-entropy, Adam (the JAX side of
samples/torch/train_lstm.py)."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

BATCH, SEQ, VOCAB, EMBED, HIDDEN, CLASSES = 4, 12, 50, 32, 48, 5
OPT = optax.adam(1e-3)


class LSTMClassifier(nn.Module):
    @nn.compact
    def __call__(self, tokens):
        x = nn.Embed(VOCAB, EMBED)(tokens)
        cell = nn.LSTMCell(HIDDEN)
        carry = cell.initialize_carry(jax.random.PRNGKey(0), x[:, 0].shape)
        for t in range(SEQ):
            carry, h = cell(carry, x[:, t])
        return nn.Dense(CLASSES)(h)


MODEL = LSTMClassifier()


def f(params, opt_state, tokens, labels):
    """One step: forward, loss, backward, Adam update."""

    def loss(p):
        logits = MODEL.apply(p, tokens)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    value, grads = jax.value_and_grad(loss)(params)
    updates, opt_state = OPT.update(grads, opt_state, params)
    return value, grads, optax.apply_updates(params, updates), opt_state


def get_inputs():
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
    params = jax.tree_util.tree_map(np.asarray, MODEL.init(jax.random.PRNGKey(0), tokens))
    opt_state = jax.tree_util.tree_map(np.asarray, OPT.init(params))
    labels = rng.integers(0, CLASSES, BATCH).astype(np.int32)
    return [params, opt_state, tokens, labels]
