def orders():
    return []
