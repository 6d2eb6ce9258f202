# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_kubectl_migrate_global_optspecs
    string join \n kubeconfig= context= n/namespace= color= v/v= request-timeout= h/help V/version
end

function __fish_kubectl_migrate_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_kubectl_migrate_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_kubectl_migrate_using_subcommand
    set -l cmd (__fish_kubectl_migrate_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c kubectl-migrate -n "__fish_kubectl_migrate_needs_command" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, merged, or ~/.kube/config)' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_needs_command" -l context -d 'The kubeconfig context to use (default: the current context). schema-diff takes it several times, once per cluster to compare' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_needs_command" -s n -l namespace -d 'The namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_needs_command" -l color -d 'When to colour output; NO_COLOR in the environment means never, unless "always" is given' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_needs_command" -s v -l v -l verbose -d 'More detail on stderr, as kubectl\'s -v: -v or -v=1 the steps, -vv or -v=2 more, -v=6 every API request (method, URL, status, time)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_needs_command" -l request-timeout -d 'How long to wait for one request to the API server, e.g. 30s, 1m, 500ms; 0 waits without limit. Connecting to a server never waits longer than this (10s when 0)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_needs_command" -s V -l version -d 'Print version'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_needs_command" -f -a "statefulset" -d 'Move a StatefulSet to another cluster pod by pod, without downtime (resumable, reversible)'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_needs_command" -f -a "sts" -d 'Move a StatefulSet to another cluster pod by pod, without downtime (resumable, reversible)'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_needs_command" -f -a "schema-diff" -d 'Compare API schemas (CRDs and built-in types) across clusters or files'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_needs_command" -f -a "failure-policy" -d 'Simulate and explain Job podFailurePolicy, backoff and per-index behaviour'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_needs_command" -f -a "version" -d 'Print the plugin\'s version and the version of the cluster it would talk to'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_needs_command" -f -a "controller" -d 'Run migrations in a cluster: the controller of StatefulSetMigration resources, and its CRDs'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -s l -l selector -d 'Move every StatefulSet of the namespace that matches this label selector, each with its own journal and lease' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l parallel -d 'With -l or --all: how many StatefulSets move at the same time' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l to-context -d 'The destination context' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l to-namespace -d 'The destination namespace (default: the source namespace)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l to-kubeconfig -d 'A separate kubeconfig for the destination context (default: the source\'s)' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l dry-run -d 'Show the plan without changing anything; `server` also dry-runs every write on the servers' -r -f -a "none\t'No dry run: make the changes'
client\t'Print the plan; no writes'
server\t'Print the plan and dry-run every write on the servers'"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l batch -d 'Ordinals moved per step; `auto`: as many as the PodDisruptionBudgets that select the set allow (1 without one)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l timeout -d 'How long to wait for one pod to go or to become Ready before stopping (resumable)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l on-timeout -d 'When a moved pod is not Ready within --timeout (its ordinal then runs nowhere): `stop` and say why, or `rollback` at once (for runbooks)' -r -f -a "stop\t'Stop; the ordinals not Ready stay down until a rerun (keeps waiting) or --rollback'
rollback\t'Move every ordinal back to the source at once, then exit 1'"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l health-check -d 'Command run (by sh -c) after each ordinal is Ready, with ORDINAL, POD, NAMESPACE and CONTEXT set; a non-zero exit stops the migration in a resumable state' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l volumes -d '`shared`: copy the claims and PVs (both clusters reach the storage); `fresh`: new claims from the destination\'s volumeClaimTemplates, for apps that rebuild a replica from its peers (needs --health-check)' -r -f -a "shared\t'Copy the source\'s claims and PVs: both clusters reach the same storage'
fresh\t'New claims from the destination\'s volumeClaimTemplates; the source\'s are kept for rollback'"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l storage-class-map -d 'Use StorageClass NEW in the destination where the source uses OLD (repeatable)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -s o -l output -d 'Output format for data on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, merged, or ~/.kube/config)' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l context -d 'The kubeconfig context to use (default: the current context). schema-diff takes it several times, once per cluster to compare' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -s n -l namespace -d 'The namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l color -d 'When to colour output; NO_COLOR in the environment means never, unless "always" is given' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -s v -l v -l verbose -d 'More detail on stderr, as kubectl\'s -v: -v or -v=1 the steps, -vv or -v=2 more, -v=6 every API request (method, URL, status, time)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l request-timeout -d 'How long to wait for one request to the API server, e.g. 30s, 1m, 500ms; 0 waits without limit. Connecting to a server never waits longer than this (10s when 0)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l all -d 'Move every StatefulSet of the namespace, each with its own journal and lease'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -s y -l yes -d 'Do not prompt; required when stdin is not a terminal'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l step -d 'Pause before each ordinal: ask on a terminal; otherwise move one batch and exit 3'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l no-health-check -d 'Resume without the --health-check the migration was started with, or run --volumes=fresh without one'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l copy-dependencies -d 'Copy the headless Service and the ConfigMaps, Secrets and ServiceAccount the pods use'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l create-namespace -d 'Create the destination namespace if it does not exist'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l allow-unhealthy -d 'Start even if not all source replicas are Ready'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l rollback -d 'Move ordinals back to the source, from any point'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l status -d 'Show both sides, the journal, and what the next run will do; changes nothing'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l cleanup -d 'After completion, delete the source\'s leftover StatefulSet, PVC and PV objects (never the storage)'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l rebuild-journal -d 'Recovery after the journal was deleted: write a journal rebuilt from what both clusters show, then rerun to resume or roll back'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l recreate-destination -d 'Recovery after the destination StatefulSet was deleted mid-migration: create it again over the ordinals the journal places there, so that its controller adopts the pods still running there'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -l restore-reclaim-policy -d 'With --cleanup: give the destination\'s PVs back the reclaim policies they had in the source'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand statefulset" -s V -l version -d 'Print version'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -s l -l selector -d 'Move every StatefulSet of the namespace that matches this label selector, each with its own journal and lease' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l parallel -d 'With -l or --all: how many StatefulSets move at the same time' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l to-context -d 'The destination context' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l to-namespace -d 'The destination namespace (default: the source namespace)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l to-kubeconfig -d 'A separate kubeconfig for the destination context (default: the source\'s)' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l dry-run -d 'Show the plan without changing anything; `server` also dry-runs every write on the servers' -r -f -a "none\t'No dry run: make the changes'
client\t'Print the plan; no writes'
server\t'Print the plan and dry-run every write on the servers'"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l batch -d 'Ordinals moved per step; `auto`: as many as the PodDisruptionBudgets that select the set allow (1 without one)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l timeout -d 'How long to wait for one pod to go or to become Ready before stopping (resumable)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l on-timeout -d 'When a moved pod is not Ready within --timeout (its ordinal then runs nowhere): `stop` and say why, or `rollback` at once (for runbooks)' -r -f -a "stop\t'Stop; the ordinals not Ready stay down until a rerun (keeps waiting) or --rollback'
rollback\t'Move every ordinal back to the source at once, then exit 1'"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l health-check -d 'Command run (by sh -c) after each ordinal is Ready, with ORDINAL, POD, NAMESPACE and CONTEXT set; a non-zero exit stops the migration in a resumable state' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l volumes -d '`shared`: copy the claims and PVs (both clusters reach the storage); `fresh`: new claims from the destination\'s volumeClaimTemplates, for apps that rebuild a replica from its peers (needs --health-check)' -r -f -a "shared\t'Copy the source\'s claims and PVs: both clusters reach the same storage'
fresh\t'New claims from the destination\'s volumeClaimTemplates; the source\'s are kept for rollback'"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l storage-class-map -d 'Use StorageClass NEW in the destination where the source uses OLD (repeatable)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -s o -l output -d 'Output format for data on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, merged, or ~/.kube/config)' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l context -d 'The kubeconfig context to use (default: the current context). schema-diff takes it several times, once per cluster to compare' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -s n -l namespace -d 'The namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l color -d 'When to colour output; NO_COLOR in the environment means never, unless "always" is given' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -s v -l v -l verbose -d 'More detail on stderr, as kubectl\'s -v: -v or -v=1 the steps, -vv or -v=2 more, -v=6 every API request (method, URL, status, time)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l request-timeout -d 'How long to wait for one request to the API server, e.g. 30s, 1m, 500ms; 0 waits without limit. Connecting to a server never waits longer than this (10s when 0)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l all -d 'Move every StatefulSet of the namespace, each with its own journal and lease'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -s y -l yes -d 'Do not prompt; required when stdin is not a terminal'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l step -d 'Pause before each ordinal: ask on a terminal; otherwise move one batch and exit 3'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l no-health-check -d 'Resume without the --health-check the migration was started with, or run --volumes=fresh without one'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l copy-dependencies -d 'Copy the headless Service and the ConfigMaps, Secrets and ServiceAccount the pods use'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l create-namespace -d 'Create the destination namespace if it does not exist'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l allow-unhealthy -d 'Start even if not all source replicas are Ready'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l rollback -d 'Move ordinals back to the source, from any point'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l status -d 'Show both sides, the journal, and what the next run will do; changes nothing'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l cleanup -d 'After completion, delete the source\'s leftover StatefulSet, PVC and PV objects (never the storage)'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l rebuild-journal -d 'Recovery after the journal was deleted: write a journal rebuilt from what both clusters show, then rerun to resume or roll back'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l recreate-destination -d 'Recovery after the destination StatefulSet was deleted mid-migration: create it again over the ordinals the journal places there, so that its controller adopts the pods still running there'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -l restore-reclaim-policy -d 'With --cleanup: give the destination\'s PVs back the reclaim policies they had in the source'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand sts" -s V -l version -d 'Print version'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -s f -l filename -d 'A source: a CRD manifest, a multi-document YAML or JSON file, a directory of them, an OpenAPI v3 document (as served at /openapi/v3/...), or - for stdin. Repeatable; every --context is a source too' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l group -d 'Only CRDs of this API group (repeatable)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l builtin -d 'Compare a built-in type through each source\'s OpenAPI v3, e.g. apps/v1/statefulsets or core/v1/pods (repeatable)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l object -d 'Check which sources accept the objects in FILE (repeatable), locally against each schema' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l chunk-size -d 'Read each cluster\'s CRDs in pages of this many (as kubectl get --chunk-size); 0 reads them all in one request. Pages keep memory bounded on clusters with many large CRDs' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l witness-dir -d 'Write each witness as a manifest into DIR (created if missing), one file per finding' -r -f -a "(__fish_complete_directories)"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l fail-on -d 'The lowest class that makes the exit code 1' -r -f -a "breaking\t'Exit 1 when a breaking difference is found'
unproven\t'Exit 1 on breaking differences and on CEL rules added that may break but were not shown to'
any\t'Exit 1 on any difference, informational ones included'
none\t'Always exit 0 unless there is an error'"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l ignore -d 'Leave out findings of this rule, e.g. enum-widened or description-changed (repeatable; see the README for the list)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l baseline -d 'The source the others are judged against (a context name or path; default: the first --context, else the first -f)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l debounce -d 'With --watch: coalesce writes that come within this long of each other' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l on-breaking -d 'With --watch: run CMD (with sh -c) for each breaking change; the event is on its stdin as JSON, and API, SOURCE and CLASS are in its environment' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l on-change -d 'With --watch: run CMD (with sh -c) for every event, as --on-breaking does' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l exit-on -d 'With --watch: exit 1 at the first breaking change (or at the first change at all)' -r -f -a "breaking\t''
change\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l metrics-addr -d 'With --watch: serve Prometheus metrics on HOST:PORT (findings per API, class and source; LCD present per API; source up; events)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l lcd-dir -d 'With --watch: keep DIR/NAME.yaml the LCD manifest of each API (replaced atomically; removed while an API has no LCD)' -r -f -a "(__fish_complete_directories)"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -s o -l output -d 'Output format for data on stdout' -r -f -a "table\t''
json\t''
yaml\t''
markdown\t'A Markdown table, for pull-request comments'"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, merged, or ~/.kube/config)' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l context -d 'The kubeconfig context to use (default: the current context). schema-diff takes it several times, once per cluster to compare' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -s n -l namespace -d 'The namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l color -d 'When to colour output; NO_COLOR in the environment means never, unless "always" is given' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -s v -l v -l verbose -d 'More detail on stderr, as kubectl\'s -v: -v or -v=1 the steps, -vv or -v=2 more, -v=6 every API request (method, URL, status, time)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l request-timeout -d 'How long to wait for one request to the API server, e.g. 30s, 1m, 500ms; 0 waits without limit. Connecting to a server never waits longer than this (10s when 0)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l lcd -d 'Print, per CRD, a CRD manifest whose schema every source accepts (YAML; a JSON list with -o json). Dropped fields and the reasons where there is no LCD go to stderr'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l server -d 'With --object: also ask each cluster, by a server-side dry-run create with fieldValidation=Strict'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l no-witnesses -d 'Do not build witness objects for breaking findings nor evaluate CEL rules added (they are then unproven)'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l prove -d 'Dry-run each witness on the clusters (server-side create, fieldValidation=Strict): a finding is proven when the baseline\'s server accepts it and the other\'s rejects it or stores it differently. Exit 5 when a server contradicts the local judgement'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l all -d 'Show informational findings (description changes, ...) in the table too'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -l watch -d 'Keep watching the clusters\' CRDs after the report, and print one event per change (an NDJSON line with -o json) until interrupted'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand schema-diff" -s V -l version -d 'Print version'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and not __fish_seen_subcommand_from simulate explain check help" -s o -l output -d 'Output format for data on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and not __fish_seen_subcommand_from simulate explain check help" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, merged, or ~/.kube/config)' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and not __fish_seen_subcommand_from simulate explain check help" -l context -d 'The kubeconfig context to use (default: the current context). schema-diff takes it several times, once per cluster to compare' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and not __fish_seen_subcommand_from simulate explain check help" -s n -l namespace -d 'The namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and not __fish_seen_subcommand_from simulate explain check help" -l color -d 'When to colour output; NO_COLOR in the environment means never, unless "always" is given' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and not __fish_seen_subcommand_from simulate explain check help" -s v -l v -l verbose -d 'More detail on stderr, as kubectl\'s -v: -v or -v=1 the steps, -vv or -v=2 more, -v=6 every API request (method, URL, status, time)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and not __fish_seen_subcommand_from simulate explain check help" -l request-timeout -d 'How long to wait for one request to the API server, e.g. 30s, 1m, 500ms; 0 waits without limit. Connecting to a server never waits longer than this (10s when 0)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and not __fish_seen_subcommand_from simulate explain check help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and not __fish_seen_subcommand_from simulate explain check help" -s V -l version -d 'Print version'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and not __fish_seen_subcommand_from simulate explain check help" -f -a "simulate" -d 'Play a scenario of pod outcomes through the Job controller\'s decisions'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and not __fish_seen_subcommand_from simulate explain check help" -f -a "explain" -d 'Explain a live Job: each failed pod\'s rule, how close it is to each limit, and what the next failure of each common kind would do'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and not __fish_seen_subcommand_from simulate explain check help" -f -a "check" -d 'Validate a Job\'s failure handling by the API server\'s rules, and check feature support'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and not __fish_seen_subcommand_from simulate explain check help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from simulate" -s f -l filename -d 'The Job manifest (YAML or JSON; - for stdin)' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from simulate" -l scenario -d 'A scenario file of pod outcomes' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from simulate" -l fail -d 'A failed pod, in order (repeatable). Comma-separated parts: exit=N (the first container exits N), exit=NAME:N (that container; repeat for several), init=NAME:N (an init container), condition=TYPE[/REASON][=STATUS] (a pod condition, status True by default), index=I (Indexed Jobs), after=DURATION (time since the previous outcome). Shorthands: oom (exit=137), evicted (condition=DisruptionTarget/EvictionByEvictionAPI), preempted (condition=DisruptionTarget/PreemptionByScheduler). Example: --fail exit=137 --fail index=2,condition=DisruptionTarget/EvictionByEvictionAPI' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from simulate" -l succeed -d 'A pod that succeeds (after every --fail); `index=I` for Indexed Jobs, `after=DURATION`' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from simulate" -l k8s-version -d 'Decide as this Kubernetes version does (1.26 to 1.36; default: the newest; with --context, the cluster\'s own). Given twice (or --context twice): both, side by side, where they decide differently' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from simulate" -s o -l output -d 'Output format for data on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from simulate" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, merged, or ~/.kube/config)' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from simulate" -l context -d 'The kubeconfig context to use (default: the current context). schema-diff takes it several times, once per cluster to compare' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from simulate" -s n -l namespace -d 'The namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from simulate" -l color -d 'When to colour output; NO_COLOR in the environment means never, unless "always" is given' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from simulate" -s v -l v -l verbose -d 'More detail on stderr, as kubectl\'s -v: -v or -v=1 the steps, -vv or -v=2 more, -v=6 every API request (method, URL, status, time)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from simulate" -l request-timeout -d 'How long to wait for one request to the API server, e.g. 30s, 1m, 500ms; 0 waits without limit. Connecting to a server never waits longer than this (10s when 0)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from simulate" -s h -l help -d 'Print help'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from simulate" -s V -l version -d 'Print version'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from explain" -s o -l output -d 'Output format for data on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from explain" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, merged, or ~/.kube/config)' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from explain" -l context -d 'The kubeconfig context to use (default: the current context). schema-diff takes it several times, once per cluster to compare' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from explain" -s n -l namespace -d 'The namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from explain" -l color -d 'When to colour output; NO_COLOR in the environment means never, unless "always" is given' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from explain" -s v -l v -l verbose -d 'More detail on stderr, as kubectl\'s -v: -v or -v=1 the steps, -vv or -v=2 more, -v=6 every API request (method, URL, status, time)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from explain" -l request-timeout -d 'How long to wait for one request to the API server, e.g. 30s, 1m, 500ms; 0 waits without limit. Connecting to a server never waits longer than this (10s when 0)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from explain" -s h -l help -d 'Print help'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from explain" -s V -l version -d 'Print version'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from check" -s f -l filename -d 'The Job manifest (YAML or JSON; - for stdin)' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from check" -l k8s-version -d 'Validate as this Kubernetes version does and say which features it has on (1.26 to 1.36; default: the newest). With --context instead, the cluster\'s own version, and its API server dry-runs the Job too' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from check" -s o -l output -d 'Output format for data on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from check" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, merged, or ~/.kube/config)' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from check" -l context -d 'The kubeconfig context to use (default: the current context). schema-diff takes it several times, once per cluster to compare' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from check" -s n -l namespace -d 'The namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from check" -l color -d 'When to colour output; NO_COLOR in the environment means never, unless "always" is given' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from check" -s v -l v -l verbose -d 'More detail on stderr, as kubectl\'s -v: -v or -v=1 the steps, -vv or -v=2 more, -v=6 every API request (method, URL, status, time)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from check" -l request-timeout -d 'How long to wait for one request to the API server, e.g. 30s, 1m, 500ms; 0 waits without limit. Connecting to a server never waits longer than this (10s when 0)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from check" -s V -l version -d 'Print version'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from help" -f -a "simulate" -d 'Play a scenario of pod outcomes through the Job controller\'s decisions'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from help" -f -a "explain" -d 'Explain a live Job: each failed pod\'s rule, how close it is to each limit, and what the next failure of each common kind would do'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from help" -f -a "check" -d 'Validate a Job\'s failure handling by the API server\'s rules, and check feature support'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand failure-policy; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand version" -s o -l output -d 'Output format for data on stdout' -r -f -a "table\t''
json\t''
yaml\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand version" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, merged, or ~/.kube/config)' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand version" -l context -d 'The kubeconfig context to use (default: the current context). schema-diff takes it several times, once per cluster to compare' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand version" -s n -l namespace -d 'The namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand version" -l color -d 'When to colour output; NO_COLOR in the environment means never, unless "always" is given' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand version" -s v -l v -l verbose -d 'More detail on stderr, as kubectl\'s -v: -v or -v=1 the steps, -vv or -v=2 more, -v=6 every API request (method, URL, status, time)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand version" -l request-timeout -d 'How long to wait for one request to the API server, e.g. 30s, 1m, 500ms; 0 waits without limit. Connecting to a server never waits longer than this (10s when 0)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand version" -l client -d 'Print the client version only; do not contact a cluster'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand version" -s h -l help -d 'Print help'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand version" -s V -l version -d 'Print version'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and not __fish_seen_subcommand_from run crds help" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, merged, or ~/.kube/config)' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and not __fish_seen_subcommand_from run crds help" -l context -d 'The kubeconfig context to use (default: the current context). schema-diff takes it several times, once per cluster to compare' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and not __fish_seen_subcommand_from run crds help" -s n -l namespace -d 'The namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and not __fish_seen_subcommand_from run crds help" -l color -d 'When to colour output; NO_COLOR in the environment means never, unless "always" is given' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and not __fish_seen_subcommand_from run crds help" -s v -l v -l verbose -d 'More detail on stderr, as kubectl\'s -v: -v or -v=1 the steps, -vv or -v=2 more, -v=6 every API request (method, URL, status, time)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and not __fish_seen_subcommand_from run crds help" -l request-timeout -d 'How long to wait for one request to the API server, e.g. 30s, 1m, 500ms; 0 waits without limit. Connecting to a server never waits longer than this (10s when 0)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and not __fish_seen_subcommand_from run crds help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and not __fish_seen_subcommand_from run crds help" -s V -l version -d 'Print version'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and not __fish_seen_subcommand_from run crds help" -f -a "run" -d 'Reconcile StatefulSetMigrations in the management cluster (--context, or in-cluster) until SIGTERM'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and not __fish_seen_subcommand_from run crds help" -f -a "crds" -d 'Print the CustomResourceDefinitions the controller serves, for kubectl apply -f -'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and not __fish_seen_subcommand_from run crds help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from run" -l probe-addr -d 'Where /healthz, /readyz and /metrics are served' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from run" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, merged, or ~/.kube/config)' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from run" -l context -d 'The kubeconfig context to use (default: the current context). schema-diff takes it several times, once per cluster to compare' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from run" -s n -l namespace -d 'The namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from run" -l color -d 'When to colour output; NO_COLOR in the environment means never, unless "always" is given' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from run" -s v -l v -l verbose -d 'More detail on stderr, as kubectl\'s -v: -v or -v=1 the steps, -vv or -v=2 more, -v=6 every API request (method, URL, status, time)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from run" -l request-timeout -d 'How long to wait for one request to the API server, e.g. 30s, 1m, 500ms; 0 waits without limit. Connecting to a server never waits longer than this (10s when 0)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from run" -s A -l all-namespaces -d 'Reconcile the resources of every namespace (default: only --namespace, if given)'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from run" -s h -l help -d 'Print help'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from run" -s V -l version -d 'Print version'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from crds" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, merged, or ~/.kube/config)' -r -F
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from crds" -l context -d 'The kubeconfig context to use (default: the current context). schema-diff takes it several times, once per cluster to compare' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from crds" -s n -l namespace -d 'The namespace (default: the context\'s namespace, else "default")' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from crds" -l color -d 'When to colour output; NO_COLOR in the environment means never, unless "always" is given' -r -f -a "auto\t''
always\t''
never\t''"
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from crds" -s v -l v -l verbose -d 'More detail on stderr, as kubectl\'s -v: -v or -v=1 the steps, -vv or -v=2 more, -v=6 every API request (method, URL, status, time)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from crds" -l request-timeout -d 'How long to wait for one request to the API server, e.g. 30s, 1m, 500ms; 0 waits without limit. Connecting to a server never waits longer than this (10s when 0)' -r
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from crds" -s h -l help -d 'Print help'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from crds" -s V -l version -d 'Print version'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from help" -f -a "run" -d 'Reconcile StatefulSetMigrations in the management cluster (--context, or in-cluster) until SIGTERM'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from help" -f -a "crds" -d 'Print the CustomResourceDefinitions the controller serves, for kubectl apply -f -'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand controller; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand help; and not __fish_seen_subcommand_from statefulset schema-diff failure-policy version controller help" -f -a "statefulset" -d 'Move a StatefulSet to another cluster pod by pod, without downtime (resumable, reversible)'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand help; and not __fish_seen_subcommand_from statefulset schema-diff failure-policy version controller help" -f -a "schema-diff" -d 'Compare API schemas (CRDs and built-in types) across clusters or files'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand help; and not __fish_seen_subcommand_from statefulset schema-diff failure-policy version controller help" -f -a "failure-policy" -d 'Simulate and explain Job podFailurePolicy, backoff and per-index behaviour'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand help; and not __fish_seen_subcommand_from statefulset schema-diff failure-policy version controller help" -f -a "version" -d 'Print the plugin\'s version and the version of the cluster it would talk to'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand help; and not __fish_seen_subcommand_from statefulset schema-diff failure-policy version controller help" -f -a "controller" -d 'Run migrations in a cluster: the controller of StatefulSetMigration resources, and its CRDs'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand help; and not __fish_seen_subcommand_from statefulset schema-diff failure-policy version controller help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand help; and __fish_seen_subcommand_from failure-policy" -f -a "simulate" -d 'Play a scenario of pod outcomes through the Job controller\'s decisions'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand help; and __fish_seen_subcommand_from failure-policy" -f -a "explain" -d 'Explain a live Job: each failed pod\'s rule, how close it is to each limit, and what the next failure of each common kind would do'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand help; and __fish_seen_subcommand_from failure-policy" -f -a "check" -d 'Validate a Job\'s failure handling by the API server\'s rules, and check feature support'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand help; and __fish_seen_subcommand_from controller" -f -a "run" -d 'Reconcile StatefulSetMigrations in the management cluster (--context, or in-cluster) until SIGTERM'
complete -c kubectl-migrate -n "__fish_kubectl_migrate_using_subcommand help; and __fish_seen_subcommand_from controller" -f -a "crds" -d 'Print the CustomResourceDefinitions the controller serves, for kubectl apply -f -'
