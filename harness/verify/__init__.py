"""Independent verification: every proof judged from its public inputs and the ``.vk`` files
alone, by the pinned verifier's ``verify`` (built by :mod:`proofdiff.artifacts.pinned_verifier`)
in a short-lived container or as a process on this host."""
