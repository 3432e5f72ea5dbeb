"""The built-in kinds, one room per kind (``apis/<group>/<kind>``): each kind's strategy
holds its defaults, validation, preparation for create and update, table printer and
whatever else only that kind does; the generic registry calls it through
``ResourceType.strategy``.
"""
