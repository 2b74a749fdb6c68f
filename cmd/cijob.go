package cmd

// ciText names the CI job a holder recorded (identity.CIJobURL finds
// the job lockctl itself runs in), for refusal and wait lines.
func ciText(url string) string {
	if url == "" {
		return ""
	}
	return " " + url
}
