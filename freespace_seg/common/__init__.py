"""Small dependency-free helpers that every layer uses: progress, reports, records."""
