"""engine.analysis.summary_sinks: a long text's sinks from its summaries, against its weights.

The oracle is the whole weights of a short run, which the pass keeps: the first token's
share over every query, how often each token is a query's strongest key (argmax of each
row), and the uniform baseline from the model's own mask, per layer where layers differ
(Gemma 3's local and global layers).
"""

import numpy as np
import pytest
import tiny_models

from engine import analysis, bert, checkpoint, layer_config

TEXT = "The restaurant refused to serve me because it only cooks vegetarian food."


@pytest.mark.parametrize("name", ["llama", "gemma3", "bert"])
def test_the_sinks_from_summaries_are_those_of_the_whole_weights(name):
    model = checkpoint.load(tiny_models.TINY / name)
    run = bert.run(model, TEXT * 2)
    weights = np.asarray(run.attentions, dtype=np.float64)
    n = weights.shape[-1]
    found = analysis.summary_sinks(run.summaries, model.config)
    np.testing.assert_allclose(found.first, weights[..., 0].mean(axis=-1), rtol=1e-5)
    strongest = np.argmax(weights, axis=-1)
    np.testing.assert_allclose(
        found.received, np.bincount(strongest.ravel(), minlength=n) / strongest.size
    )
    masks = (
        np.stack(
            [
                layer_config.attention_mask(model.config, n, layer=i)
                for i in range(model.config.n_layers)
            ]
        )
        if model.config.causal
        else np.ones((1, n, n), dtype=bool)
    )
    uniform = np.mean(masks[..., 0] / masks.sum(axis=-1))
    assert found.uniform == pytest.approx(uniform)
    assert found.received[found.strongest[0]] == found.received.max()
