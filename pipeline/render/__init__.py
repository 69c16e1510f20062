"""From ranked facts to capped text: the model, templates, the token counter and the two caps."""
