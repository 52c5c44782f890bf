"""The float32 error bound that the end-to-end tests compare with.

Two programs that compute the same training step in float32 but sum in a
different order (another plan, another BLAS kernel, PyTorch) differ by
rounding only. For a sum of N terms, any order of evaluation is within
gamma_{N-1} of the exact sum relative to the sum of the terms' magnitudes,
gamma_n = n u / (1 - n u), u = 2^-24 (Higham, Accuracy and Stability of
Numerical Algorithms, 2nd ed., section 3.1 and Lemma 3.1). A gradient of a
transformer is computed through D such reductions in sequence, each of at
most N terms:

  N = max(B T tokens summed into a weight gradient, V logits in the
          softmax, 4 C inputs of the MLP's down projection, T keys)
  D = 24 L + 10: per block 12 reductions forward (2 layer norms of 2
      reductions each, QKV, scores, softmax of 2, attention times V, output
      projection, MLP up and down) and as many backward; the final layer
      norm, the head and the cross-entropy: 5 forward and 5 backward.

To first order the stages' relative errors add, so one float32 evaluation is
within D gamma_N of the exact value norm-wise (layer norm keeps activations
of order one, so a stage does not amplify the error it receives), and two
float32 evaluations are within 2 D gamma_N of each other.
"""
import json
import os

U = 2.0 ** -24


def gamma(n):
    return n * U / (1 - n * U)


def reductions(config):
    """(N, D) of examples/gpt's or examples/llama's model from
    reference.json's config (a Llama block has fewer reductions in sequence
    than a GPT block: RMSNorm is one, not two). A config that states its
    own {"reductions": {"N": n, "D": d}} (test/E2E/zoo/classifier.py,
    derived there) gives them directly."""
    if "reductions" in config:
        return config["reductions"]["N"], config["reductions"]["D"]
    # examples/llama's config names its MLP width; the GPT's is 4 * width.
    n = max(config["batch"] * config["context"], config["vocab"],
            config.get("hidden", 4 * config["width"]), config["width"],
            config["context"])
    return n, 24 * config["layers"] + 10


def one_program(config):
    """Bound of one float32 evaluation against the exact (float64) value."""
    n, d = reductions(config)
    return d * gamma(n)


def two_programs(config):
    """tau of the bounded rule: two float32 programs that sum in other
    orders differ, relatively, by at most their two distances from the
    exact value plus each one's final rounding."""
    return 2 * one_program(config) + 2 * U


def load_config(model_dir):
    with open(os.path.join(model_dir, "reference.json")) as f:
        return json.load(f)["config"]
