"""bosun's command line: flags in, one face called (headless, batch, chat), exit codes out.

Thin on purpose: what a flag means lives in `agent.run.settings`, how a request is put
together in `agent.run.assemble`.
"""
