# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_kubectl_registry_global_optspecs
    string join \n kubeconfig= context= registry= registry-from-runtime= network= n/namespace= v/verbose q/quiet h/help V/version
end

function __fish_kubectl_registry_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_kubectl_registry_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_kubectl_registry_using_subcommand
    set -l cmd (__fish_kubectl_registry_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -l context -d 'The kubeconfig context to use (default: the current context)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -l registry -d 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -l registry-from-runtime -d 'How the nodes\' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -l network -d 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host' -r -f -a "host\t'Outside the cluster (a laptop, CI next to the cluster): push to the advertised `host`'
cluster\t'Inside the cluster network (a pod, an in-cluster builder): push to `hostFromClusterNetwork`'
tunnel\t'Outside, through a tunnel: a port-forward through the API server to a ready pod of the registry\'s Service (what `kubectl port-forward` does)'"
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -s n -l namespace -d 'The namespace (OpenShift project) images go to on OpenShift\'s registry (default: the context\'s namespace, or the pod\'s)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -s v -l verbose -d 'More detail on stderr (repeat for more)'
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -s q -l quiet -d 'Nothing on stderr but errors: no progress, notes, warnings or summary'
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -s V -l version -d 'Print version'
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -f -a "push" -d 'Push an image archive (or a local engine\'s image) into the cluster and print its ref'
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -f -a "info" -d 'Show the cluster\'s local registry, where it was found, and what push would do'
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -f -a "advertise" -d 'Advertise a registry in the cluster (KEP-1755 ConfigMap), or remove the advertisement'
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -f -a "doctor" -d 'Check every hop a push takes, one line per check, and name the one that is broken'
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -f -a "ls" -d 'List the registry\'s repositories and tags (or the nodes\' content tags) and who uses them'
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -f -a "prune" -d 'Delete old tags from the registry (or the nodes), never what a workload uses'
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -f -a "why" -d 'Say why a pod\'s image does not start (pod/NAME or deploy/NAME), with the evidence and the fix'
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -f -a "version" -d 'Print the version'
complete -c kubectl-registry -n "__fish_kubectl_registry_needs_command" -f -a "completion" -d 'Print a shell completion script'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -s t -l tag -d 'Name to push as, NAME[:TAG] (default: the name recorded in the archive)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -l image -d 'Which image of a multi-image archive to push, NAME[:TAG]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -l platform -d 'Push only this platform of a multi-platform image, OS/ARCH[/VARIANT]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -l compression -d 'How to send uncompressed layers' -r -f -a "auto\t'No compression for loopback and cluster-advertised registries, gzip elsewhere'
none\t'Send uncompressed layers as they are'
gzip\t'Compress uncompressed layers with gzip'
zstd\t'Compress uncompressed layers with zstd'"
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -s j -l jobs -d 'Blobs uploaded at once' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -l ca-file -d 'Trust this PEM CA bundle for the registry\'s TLS certificate' -r -F
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -l load-command -d 'Load with this command when no registry is advertised; `{archive}` is replaced by the archive\'s path, e.g. \'mycluster load {archive}\'' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -l rollout -d 'After the push, set the ref on this workload\'s containers that run the image (or on CONTAINER) and wait for its rollout; a Deployment, StatefulSet or DaemonSet (repeatable)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -l timeout -d 'How long to wait for each rollout, e.g. 90s, 5m' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -s o -l output -d 'Output format' -r -f -a "text\t''
json\t''"
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -l context -d 'The kubeconfig context to use (default: the current context)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -l registry -d 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -l registry-from-runtime -d 'How the nodes\' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -l network -d 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host' -r -f -a "host\t'Outside the cluster (a laptop, CI next to the cluster): push to the advertised `host`'
cluster\t'Inside the cluster network (a pod, an in-cluster builder): push to `hostFromClusterNetwork`'
tunnel\t'Outside, through a tunnel: a port-forward through the API server to a ready pod of the registry\'s Service (what `kubectl port-forward` does)'"
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -s n -l namespace -d 'The namespace (OpenShift project) images go to on OpenShift\'s registry (default: the context\'s namespace, or the pod\'s)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -l insecure -d 'Allow plain HTTP to a registry that is not on loopback'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -l no-load -d 'Fail instead of loading into the nodes when no registry is advertised'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -l watch -d 'Keep running: push again (and roll out) each time the engine\'s image or the archive changes, one ref line per round; Ctrl-C ends it'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -s v -l verbose -d 'More detail on stderr (repeat for more)'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -s q -l quiet -d 'Nothing on stderr but errors: no progress, notes, warnings or summary'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand push" -s V -l version -d 'Print version'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand info" -s o -l output -d 'Output format' -r -f -a "text\t''
json\t''"
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand info" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand info" -l context -d 'The kubeconfig context to use (default: the current context)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand info" -l registry -d 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand info" -l registry-from-runtime -d 'How the nodes\' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand info" -l network -d 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host' -r -f -a "host\t'Outside the cluster (a laptop, CI next to the cluster): push to the advertised `host`'
cluster\t'Inside the cluster network (a pod, an in-cluster builder): push to `hostFromClusterNetwork`'
tunnel\t'Outside, through a tunnel: a port-forward through the API server to a ready pod of the registry\'s Service (what `kubectl port-forward` does)'"
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand info" -s n -l namespace -d 'The namespace (OpenShift project) images go to on OpenShift\'s registry (default: the context\'s namespace, or the pod\'s)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand info" -s v -l verbose -d 'More detail on stderr (repeat for more)'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand info" -s q -l quiet -d 'Nothing on stderr but errors: no progress, notes, warnings or summary'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand info" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand info" -s V -l version -d 'Print version'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand advertise" -l from-runtime -d 'How the nodes\' container runtime names the registry (`hostFromContainerRuntime`)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand advertise" -l from-cluster-network -d 'Where pods reach the registry (`hostFromClusterNetwork`)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand advertise" -l help-url -d 'The registry\'s guide, shown to users when something fails (`help`; http or https)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand advertise" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand advertise" -l context -d 'The kubeconfig context to use (default: the current context)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand advertise" -l registry -d 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand advertise" -l registry-from-runtime -d 'How the nodes\' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand advertise" -l network -d 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host' -r -f -a "host\t'Outside the cluster (a laptop, CI next to the cluster): push to the advertised `host`'
cluster\t'Inside the cluster network (a pod, an in-cluster builder): push to `hostFromClusterNetwork`'
tunnel\t'Outside, through a tunnel: a port-forward through the API server to a ready pod of the registry\'s Service (what `kubectl port-forward` does)'"
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand advertise" -s n -l namespace -d 'The namespace (OpenShift project) images go to on OpenShift\'s registry (default: the context\'s namespace, or the pod\'s)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand advertise" -l dry-run -d 'Print the ConfigMap as YAML instead of writing it'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand advertise" -l delete -d 'Remove the advertisement (other keys of the ConfigMap are kept)'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand advertise" -l no-verify -d 'Do not check first that HOST answers like a registry from here'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand advertise" -s v -l verbose -d 'More detail on stderr (repeat for more)'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand advertise" -s q -l quiet -d 'Nothing on stderr but errors: no progress, notes, warnings or summary'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand advertise" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand advertise" -s V -l version -d 'Print version'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand doctor" -l ca-file -d 'Trust this PEM CA bundle for the registry\'s TLS certificate' -r -F
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand doctor" -s o -l output -d 'Output format' -r -f -a "text\t''
json\t''"
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand doctor" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand doctor" -l context -d 'The kubeconfig context to use (default: the current context)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand doctor" -l registry -d 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand doctor" -l registry-from-runtime -d 'How the nodes\' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand doctor" -l network -d 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host' -r -f -a "host\t'Outside the cluster (a laptop, CI next to the cluster): push to the advertised `host`'
cluster\t'Inside the cluster network (a pod, an in-cluster builder): push to `hostFromClusterNetwork`'
tunnel\t'Outside, through a tunnel: a port-forward through the API server to a ready pod of the registry\'s Service (what `kubectl port-forward` does)'"
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand doctor" -s n -l namespace -d 'The namespace (OpenShift project) images go to on OpenShift\'s registry (default: the context\'s namespace, or the pod\'s)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand doctor" -l pod -d 'Also run a short-lived pod that pulls a probe image, the nodes\' own check'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand doctor" -l insecure -d 'Allow plain HTTP to a registry that is not on loopback'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand doctor" -s v -l verbose -d 'More detail on stderr (repeat for more)'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand doctor" -s q -l quiet -d 'Nothing on stderr but errors: no progress, notes, warnings or summary'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand doctor" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand doctor" -s V -l version -d 'Print version'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand ls" -l ca-file -d 'Trust this PEM CA bundle for the registry\'s TLS certificate' -r -F
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand ls" -s o -l output -d 'Output format' -r -f -a "text\t''
json\t''"
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand ls" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand ls" -l context -d 'The kubeconfig context to use (default: the current context)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand ls" -l registry -d 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand ls" -l registry-from-runtime -d 'How the nodes\' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand ls" -l network -d 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host' -r -f -a "host\t'Outside the cluster (a laptop, CI next to the cluster): push to the advertised `host`'
cluster\t'Inside the cluster network (a pod, an in-cluster builder): push to `hostFromClusterNetwork`'
tunnel\t'Outside, through a tunnel: a port-forward through the API server to a ready pod of the registry\'s Service (what `kubectl port-forward` does)'"
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand ls" -s n -l namespace -d 'The namespace (OpenShift project) images go to on OpenShift\'s registry (default: the context\'s namespace, or the pod\'s)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand ls" -l insecure -d 'Allow plain HTTP to a registry that is not on loopback'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand ls" -s v -l verbose -d 'More detail on stderr (repeat for more)'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand ls" -s q -l quiet -d 'Nothing on stderr but errors: no progress, notes, warnings or summary'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand ls" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand ls" -s V -l version -d 'Print version'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -l keep -d 'Images kept per repository, newest first by their created time (a manifest\'s tags count once)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -l ca-file -d 'Trust this PEM CA bundle for the registry\'s TLS certificate' -r -F
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -s o -l output -d 'Output format' -r -f -a "text\t''
json\t''"
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -l context -d 'The kubeconfig context to use (default: the current context)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -l registry -d 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -l registry-from-runtime -d 'How the nodes\' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -l network -d 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host' -r -f -a "host\t'Outside the cluster (a laptop, CI next to the cluster): push to the advertised `host`'
cluster\t'Inside the cluster network (a pod, an in-cluster builder): push to `hostFromClusterNetwork`'
tunnel\t'Outside, through a tunnel: a port-forward through the API server to a ready pod of the registry\'s Service (what `kubectl port-forward` does)'"
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -s n -l namespace -d 'The namespace (OpenShift project) images go to on OpenShift\'s registry (default: the context\'s namespace, or the pod\'s)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -l dry-run -d 'Say what would be deleted; delete nothing'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -l nodes -d 'Prune the nodes\' content tags, even when a registry is advertised'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -l ignore-usage -d 'Go on when the workloads cannot be read (images they use may be deleted)'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -l gc -d 'Then run `registry garbage-collect --delete-untagged` in the registry\'s container (kind-registry, k3d\'s registry) to free the disk'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -l insecure -d 'Allow plain HTTP to a registry that is not on loopback'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -s v -l verbose -d 'More detail on stderr (repeat for more)'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -s q -l quiet -d 'Nothing on stderr but errors: no progress, notes, warnings or summary'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand prune" -s V -l version -d 'Print version'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand why" -l ca-file -d 'Trust this PEM CA bundle for the registry\'s TLS certificate' -r -F
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand why" -s o -l output -d 'Output format' -r -f -a "text\t''
json\t''"
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand why" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand why" -l context -d 'The kubeconfig context to use (default: the current context)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand why" -l registry -d 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand why" -l registry-from-runtime -d 'How the nodes\' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand why" -l network -d 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host' -r -f -a "host\t'Outside the cluster (a laptop, CI next to the cluster): push to the advertised `host`'
cluster\t'Inside the cluster network (a pod, an in-cluster builder): push to `hostFromClusterNetwork`'
tunnel\t'Outside, through a tunnel: a port-forward through the API server to a ready pod of the registry\'s Service (what `kubectl port-forward` does)'"
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand why" -s n -l namespace -d 'The namespace (OpenShift project) images go to on OpenShift\'s registry (default: the context\'s namespace, or the pod\'s)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand why" -l insecure -d 'Allow plain HTTP to a registry that is not on loopback'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand why" -s v -l verbose -d 'More detail on stderr (repeat for more)'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand why" -s q -l quiet -d 'Nothing on stderr but errors: no progress, notes, warnings or summary'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand why" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand why" -s V -l version -d 'Print version'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand version" -s o -l output -d 'Output format' -r -f -a "text\t''
json\t''"
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand version" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand version" -l context -d 'The kubeconfig context to use (default: the current context)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand version" -l registry -d 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand version" -l registry-from-runtime -d 'How the nodes\' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand version" -l network -d 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host' -r -f -a "host\t'Outside the cluster (a laptop, CI next to the cluster): push to the advertised `host`'
cluster\t'Inside the cluster network (a pod, an in-cluster builder): push to `hostFromClusterNetwork`'
tunnel\t'Outside, through a tunnel: a port-forward through the API server to a ready pod of the registry\'s Service (what `kubectl port-forward` does)'"
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand version" -s n -l namespace -d 'The namespace (OpenShift project) images go to on OpenShift\'s registry (default: the context\'s namespace, or the pod\'s)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand version" -s v -l verbose -d 'More detail on stderr (repeat for more)'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand version" -s q -l quiet -d 'Nothing on stderr but errors: no progress, notes, warnings or summary'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand version" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand version" -s V -l version -d 'Print version'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand completion" -l kubeconfig -d 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)' -r -F
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand completion" -l context -d 'The kubeconfig context to use (default: the current context)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand completion" -l registry -d 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand completion" -l registry-from-runtime -d 'How the nodes\' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand completion" -l network -d 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host' -r -f -a "host\t'Outside the cluster (a laptop, CI next to the cluster): push to the advertised `host`'
cluster\t'Inside the cluster network (a pod, an in-cluster builder): push to `hostFromClusterNetwork`'
tunnel\t'Outside, through a tunnel: a port-forward through the API server to a ready pod of the registry\'s Service (what `kubectl port-forward` does)'"
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand completion" -s n -l namespace -d 'The namespace (OpenShift project) images go to on OpenShift\'s registry (default: the context\'s namespace, or the pod\'s)' -r
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand completion" -s v -l verbose -d 'More detail on stderr (repeat for more)'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand completion" -s q -l quiet -d 'Nothing on stderr but errors: no progress, notes, warnings or summary'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand completion" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c kubectl-registry -n "__fish_kubectl_registry_using_subcommand completion" -s V -l version -d 'Print version'
