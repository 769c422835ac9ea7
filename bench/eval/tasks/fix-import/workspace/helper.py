def slugify(title):
    """Lower case, words joined by dashes."""
    return "-".join(title.lower().split())
