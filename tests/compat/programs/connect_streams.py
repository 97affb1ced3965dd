"""connect: a CoMapFunction, a CoFlatMapFunction, and two keyed streams joined by a
KeyedCoProcessFunction with keyed state."""

from barrierflow.common import Types
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.functions import (
    CoFlatMapFunction,
    CoMapFunction,
    KeyedCoProcessFunction,
    RuntimeContext,
)
from barrierflow.datastream.state import ListStateDescriptor, ValueStateDescriptor


class Describe(CoMapFunction):
    def map1(self, value):
        return "number " + str(value)

    def map2(self, value):
        return "word " + value


class Split(CoFlatMapFunction):
    def flat_map1(self, value):
        yield value
        yield -value

    def flat_map2(self, value):
        for letter in value:
            yield len(letter) * 100


class PriceOrders(KeyedCoProcessFunction):
    """Orders (product, quantity) priced by their product's price (product, price); orders
    that come before it wait for it. One price per product: the output does not depend on
    how the two inputs interleave."""

    def open(self, runtime_context: RuntimeContext):
        self.price = runtime_context.get_state(ValueStateDescriptor("price", Types.INT()))
        self.waiting = runtime_context.get_list_state(ListStateDescriptor("waiting", Types.INT()))

    def process_element1(self, order, ctx):
        price = self.price.value()
        if price is None:
            self.waiting.add(order[1])
        else:
            yield ctx.get_current_key(), order[1] * price

    def process_element2(self, product_price, ctx):
        if self.price.value() is None:
            for quantity in self.waiting.get():
                yield ctx.get_current_key(), quantity * product_price[1]
            self.waiting.clear()
        self.price.update(product_price[1])


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)

numbers = env.from_collection([1, 2, 3], type_info=Types.INT())
words = env.from_collection(["ab", "c"], type_info=Types.STRING())
numbers.connect(words).map(Describe(), output_type=Types.STRING()).print("map").set_parallelism(1)
numbers.connect(words).flat_map(Split(), output_type=Types.INT()).print("flat").set_parallelism(1)

orders = env.from_collection([("apple", 2), ("pear", 1), ("apple", 5), ("fig", 3)])
prices = env.from_collection([("apple", 10), ("pear", 7)])
orders.key_by(lambda o: o[0]).connect(prices.key_by(lambda p: p[0])).process(
    PriceOrders(), output_type=Types.TUPLE([Types.STRING(), Types.INT()])
).print("priced").set_parallelism(1)
env.execute("connect_streams")
