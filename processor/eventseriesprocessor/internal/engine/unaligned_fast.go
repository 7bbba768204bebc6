//go:build amd64 || arm64 || ppc64le || s390x || 386

package engine

// unalignedLoads: this processor reads and writes words at any address, so
// appendFields copies short fields a word at a time.
const unalignedLoads = true
