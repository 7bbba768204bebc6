//go:build !(amd64 || arm64 || ppc64le || s390x || 386)

package engine

// unalignedLoads: this processor may refuse a word at an unaligned address,
// so appendFields copies every field with copy (appendLongFields).
const unalignedLoads = false
