//go:build !(amd64 || arm64 || ppc64le || s390x || 386)

package k8sevent

import "encoding/binary"

// keyWord is the 8 bytes of k at at (at+8 <= len(k)) as one word, read
// byte by byte where the processor may refuse an unaligned load.
func keyWord(k string, at int) uint64 {
	return binary.LittleEndian.Uint64([]byte(k[at : at+8]))
}
