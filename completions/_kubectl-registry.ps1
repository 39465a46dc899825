
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'kubectl-registry' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'kubectl-registry'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'kubectl-registry' {
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use (default: the current context)')
            [CompletionResult]::new('--registry', '--registry', [CompletionResultType]::ParameterName, 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]')
            [CompletionResult]::new('--registry-from-runtime', '--registry-from-runtime', [CompletionResultType]::ParameterName, 'How the nodes'' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]')
            [CompletionResult]::new('--network', '--network', [CompletionResultType]::ParameterName, 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('push', 'push', [CompletionResultType]::ParameterValue, 'Push an image archive (or a local engine''s image) into the cluster and print its ref')
            [CompletionResult]::new('info', 'info', [CompletionResultType]::ParameterValue, 'Show the cluster''s local registry, where it was found, and what push would do')
            [CompletionResult]::new('advertise', 'advertise', [CompletionResultType]::ParameterValue, 'Advertise a registry in the cluster (KEP-1755 ConfigMap), or remove the advertisement')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Check every hop a push takes, one line per check, and name the one that is broken')
            [CompletionResult]::new('ls', 'ls', [CompletionResultType]::ParameterValue, 'List the registry''s repositories and tags (or the nodes'' content tags) and who uses them')
            [CompletionResult]::new('prune', 'prune', [CompletionResultType]::ParameterValue, 'Delete old tags from the registry (or the nodes), never what a workload uses')
            [CompletionResult]::new('why', 'why', [CompletionResultType]::ParameterValue, 'Say why a pod''s image does not start (pod/NAME or deploy/NAME), with the evidence and the fix')
            [CompletionResult]::new('version', 'version', [CompletionResultType]::ParameterValue, 'Print the version')
            [CompletionResult]::new('completion', 'completion', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            break
        }
        'kubectl-registry;push' {
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Name to push as, NAME[:TAG] (default: the name recorded in the archive)')
            [CompletionResult]::new('--tag', '--tag', [CompletionResultType]::ParameterName, 'Name to push as, NAME[:TAG] (default: the name recorded in the archive)')
            [CompletionResult]::new('--image', '--image', [CompletionResultType]::ParameterName, 'Which image of a multi-image archive to push, NAME[:TAG]')
            [CompletionResult]::new('--platform', '--platform', [CompletionResultType]::ParameterName, 'Push only this platform of a multi-platform image, OS/ARCH[/VARIANT]')
            [CompletionResult]::new('--compression', '--compression', [CompletionResultType]::ParameterName, 'How to send uncompressed layers')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Blobs uploaded at once')
            [CompletionResult]::new('--jobs', '--jobs', [CompletionResultType]::ParameterName, 'Blobs uploaded at once')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Trust this PEM CA bundle for the registry''s TLS certificate')
            [CompletionResult]::new('--load-command', '--load-command', [CompletionResultType]::ParameterName, 'Load with this command when no registry is advertised; `{archive}` is replaced by the archive''s path, e.g. ''mycluster load {archive}''')
            [CompletionResult]::new('--rollout', '--rollout', [CompletionResultType]::ParameterName, 'After the push, set the ref on this workload''s containers that run the image (or on CONTAINER) and wait for its rollout; a Deployment, StatefulSet or DaemonSet (repeatable)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'How long to wait for each rollout, e.g. 90s, 5m')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use (default: the current context)')
            [CompletionResult]::new('--registry', '--registry', [CompletionResultType]::ParameterName, 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]')
            [CompletionResult]::new('--registry-from-runtime', '--registry-from-runtime', [CompletionResultType]::ParameterName, 'How the nodes'' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]')
            [CompletionResult]::new('--network', '--network', [CompletionResultType]::ParameterName, 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('--insecure', '--insecure', [CompletionResultType]::ParameterName, 'Allow plain HTTP to a registry that is not on loopback')
            [CompletionResult]::new('--no-load', '--no-load', [CompletionResultType]::ParameterName, 'Fail instead of loading into the nodes when no registry is advertised')
            [CompletionResult]::new('--watch', '--watch', [CompletionResultType]::ParameterName, 'Keep running: push again (and roll out) each time the engine''s image or the archive changes, one ref line per round; Ctrl-C ends it')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kubectl-registry;info' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use (default: the current context)')
            [CompletionResult]::new('--registry', '--registry', [CompletionResultType]::ParameterName, 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]')
            [CompletionResult]::new('--registry-from-runtime', '--registry-from-runtime', [CompletionResultType]::ParameterName, 'How the nodes'' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]')
            [CompletionResult]::new('--network', '--network', [CompletionResultType]::ParameterName, 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kubectl-registry;advertise' {
            [CompletionResult]::new('--from-runtime', '--from-runtime', [CompletionResultType]::ParameterName, 'How the nodes'' container runtime names the registry (`hostFromContainerRuntime`)')
            [CompletionResult]::new('--from-cluster-network', '--from-cluster-network', [CompletionResultType]::ParameterName, 'Where pods reach the registry (`hostFromClusterNetwork`)')
            [CompletionResult]::new('--help-url', '--help-url', [CompletionResultType]::ParameterName, 'The registry''s guide, shown to users when something fails (`help`; http or https)')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use (default: the current context)')
            [CompletionResult]::new('--registry', '--registry', [CompletionResultType]::ParameterName, 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]')
            [CompletionResult]::new('--registry-from-runtime', '--registry-from-runtime', [CompletionResultType]::ParameterName, 'How the nodes'' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]')
            [CompletionResult]::new('--network', '--network', [CompletionResultType]::ParameterName, 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Print the ConfigMap as YAML instead of writing it')
            [CompletionResult]::new('--delete', '--delete', [CompletionResultType]::ParameterName, 'Remove the advertisement (other keys of the ConfigMap are kept)')
            [CompletionResult]::new('--no-verify', '--no-verify', [CompletionResultType]::ParameterName, 'Do not check first that HOST answers like a registry from here')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kubectl-registry;doctor' {
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Trust this PEM CA bundle for the registry''s TLS certificate')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use (default: the current context)')
            [CompletionResult]::new('--registry', '--registry', [CompletionResultType]::ParameterName, 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]')
            [CompletionResult]::new('--registry-from-runtime', '--registry-from-runtime', [CompletionResultType]::ParameterName, 'How the nodes'' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]')
            [CompletionResult]::new('--network', '--network', [CompletionResultType]::ParameterName, 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('--pod', '--pod', [CompletionResultType]::ParameterName, 'Also run a short-lived pod that pulls a probe image, the nodes'' own check')
            [CompletionResult]::new('--insecure', '--insecure', [CompletionResultType]::ParameterName, 'Allow plain HTTP to a registry that is not on loopback')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kubectl-registry;ls' {
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Trust this PEM CA bundle for the registry''s TLS certificate')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use (default: the current context)')
            [CompletionResult]::new('--registry', '--registry', [CompletionResultType]::ParameterName, 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]')
            [CompletionResult]::new('--registry-from-runtime', '--registry-from-runtime', [CompletionResultType]::ParameterName, 'How the nodes'' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]')
            [CompletionResult]::new('--network', '--network', [CompletionResultType]::ParameterName, 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('--insecure', '--insecure', [CompletionResultType]::ParameterName, 'Allow plain HTTP to a registry that is not on loopback')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kubectl-registry;prune' {
            [CompletionResult]::new('--keep', '--keep', [CompletionResultType]::ParameterName, 'Images kept per repository, newest first by their created time (a manifest''s tags count once)')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Trust this PEM CA bundle for the registry''s TLS certificate')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use (default: the current context)')
            [CompletionResult]::new('--registry', '--registry', [CompletionResultType]::ParameterName, 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]')
            [CompletionResult]::new('--registry-from-runtime', '--registry-from-runtime', [CompletionResultType]::ParameterName, 'How the nodes'' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]')
            [CompletionResult]::new('--network', '--network', [CompletionResultType]::ParameterName, 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Say what would be deleted; delete nothing')
            [CompletionResult]::new('--nodes', '--nodes', [CompletionResultType]::ParameterName, 'Prune the nodes'' content tags, even when a registry is advertised')
            [CompletionResult]::new('--ignore-usage', '--ignore-usage', [CompletionResultType]::ParameterName, 'Go on when the workloads cannot be read (images they use may be deleted)')
            [CompletionResult]::new('--gc', '--gc', [CompletionResultType]::ParameterName, 'Then run `registry garbage-collect --delete-untagged` in the registry''s container (kind-registry, k3d''s registry) to free the disk')
            [CompletionResult]::new('--insecure', '--insecure', [CompletionResultType]::ParameterName, 'Allow plain HTTP to a registry that is not on loopback')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kubectl-registry;why' {
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Trust this PEM CA bundle for the registry''s TLS certificate')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use (default: the current context)')
            [CompletionResult]::new('--registry', '--registry', [CompletionResultType]::ParameterName, 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]')
            [CompletionResult]::new('--registry-from-runtime', '--registry-from-runtime', [CompletionResultType]::ParameterName, 'How the nodes'' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]')
            [CompletionResult]::new('--network', '--network', [CompletionResultType]::ParameterName, 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('--insecure', '--insecure', [CompletionResultType]::ParameterName, 'Allow plain HTTP to a registry that is not on loopback')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kubectl-registry;version' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use (default: the current context)')
            [CompletionResult]::new('--registry', '--registry', [CompletionResultType]::ParameterName, 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]')
            [CompletionResult]::new('--registry-from-runtime', '--registry-from-runtime', [CompletionResultType]::ParameterName, 'How the nodes'' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]')
            [CompletionResult]::new('--network', '--network', [CompletionResultType]::ParameterName, 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'kubectl-registry;completion' {
            [CompletionResult]::new('--kubeconfig', '--kubeconfig', [CompletionResultType]::ParameterName, 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)')
            [CompletionResult]::new('--context', '--context', [CompletionResultType]::ParameterName, 'The kubeconfig context to use (default: the current context)')
            [CompletionResult]::new('--registry', '--registry', [CompletionResultType]::ParameterName, 'Registry to push to, skipping discovery [env: KUBECTL_REGISTRY_HOST]')
            [CompletionResult]::new('--registry-from-runtime', '--registry-from-runtime', [CompletionResultType]::ParameterName, 'How the nodes'' container runtime names that registry (default: --registry) [env: KUBECTL_REGISTRY_RUNTIME_HOST]')
            [CompletionResult]::new('--network', '--network', [CompletionResultType]::ParameterName, 'Where this command runs, which decides the registry host it pushes to: `host` (outside the cluster: the advertised host) or `cluster` (in the cluster network: its hostFromClusterNetwork). Default: cluster in a pod (in-cluster config), else host')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('--namespace', '--namespace', [CompletionResultType]::ParameterName, 'The namespace (OpenShift project) images go to on OpenShift''s registry (default: the context''s namespace, or the pod''s)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More detail on stderr (repeat for more)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Nothing on stderr but errors: no progress, notes, warnings or summary')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
