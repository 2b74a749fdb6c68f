package cmd

// ciText names the CI job a holder recorded, for refusal and wait lines.
func ciText(url string) string {
	if url == "" {
		return ""
	}
	return " " + url
}

// ciJobURL is the URL of the CI job lockctl runs in, from the variables the
// usual CI systems set; "" outside CI.
func ciJobURL(getenv func(string) string) string {
	if s, r, id := getenv("GITHUB_SERVER_URL"), getenv("GITHUB_REPOSITORY"), getenv("GITHUB_RUN_ID"); s != "" && r != "" && id != "" {
		return s + "/" + r + "/actions/runs/" + id
	}
	for _, v := range []string{"CI_JOB_URL", "BUILDKITE_BUILD_URL", "BUILD_URL"} {
		if u := getenv(v); u != "" {
			return u
		}
	}
	return ""
}
