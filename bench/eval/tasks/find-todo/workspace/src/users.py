def users():
    return ['ada']
