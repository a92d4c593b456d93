"""The execution vote (portable core): several candidate answers to one question, grouped by
their results, the answer most of them give, and how sure that is.

- :mod:`.match`: two results compared as the evaluation compares an answer with the gold one;
- :mod:`.tally`: candidates grouped by their result, the winner (greedy first on a tie);
- :mod:`.stopping`: when the outcome is clear enough to stop drawing candidates;
- :mod:`.answers`: what the user is told (:class:`~.answers.Agreement`,
  :class:`~.answers.Competing`).
"""
