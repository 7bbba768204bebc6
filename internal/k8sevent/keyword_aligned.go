//go:build !(amd64 || arm64 || ppc64le || s390x || 386)

package k8sevent

import "encoding/binary"

// keyWord is the 8 bytes of k at at (at+8 <= len(k)) as one word, read
// byte by byte where the processor may refuse an unaligned load.
func keyWord(k string, at int) uint64 {
	return binary.LittleEndian.Uint64([]byte(k[at : at+8]))
}

// UnalignedLoads: this processor may refuse a word at an unaligned address. The build
// constraint of keyword_unaligned.go is the one list of the processors
// that do: keyWord here and the engine's key copy both follow it.
const UnalignedLoads = false
