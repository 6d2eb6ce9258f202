complete --keep-order --exclusive --command kubectl-migrate --arguments "(COMPLETE=fish kubectl-migrate -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
