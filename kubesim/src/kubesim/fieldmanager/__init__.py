"""Field management: the three PATCH flavours, server-side apply, ``metadata.managedFields``
and the structural types of objects they walk.
"""
