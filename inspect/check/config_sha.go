package check

import (
	"crypto/sha256"
	"encoding/hex"
)

// ConfigSHA256 is the hex sha256 of config.json's bytes, as a dump's
// manifest records its model's (capture.ModelInfoFor): CheckOptions'
// ConfigSHA256.
func ConfigSHA256(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}
