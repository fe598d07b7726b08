// Package validate checks the delivery files (Helm chart, kustomize
// manifests, Tiltfile) without a cluster: it renders, lints and decodes them
// strictly into the Kubernetes API types.
package validate
