"""One user request: the runtime (run -> step -> query / act), one model call (a turn),
the context budget and compaction, the grammar constraint, budgets, the loop guard and
cancel. A task is one user request; a turn is one model call, as in Codex.
"""
