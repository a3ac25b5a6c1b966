// The default text corpus, compiled into the binary: original English prose about computing
// and nature, written for mtrain (no third-party text). The text data set trains on it when
// data.path is empty. It is held as raw string pieces of under 8 KB each (compilers limit the
// length of one literal), joined once on first use.
#include "lib/trainer/data/dataset.hpp"

namespace mtrain::trainer {
namespace {

// clang-format off
const char* const kPieces[] = {
R"corpus(How a Computer Runs a Program

A computer is a machine that follows instructions. Each instruction is small: add two numbers, copy a value from one place to another, compare two values, or jump to a different instruction if a comparison came out a certain way. None of these steps is clever on its own. The power of a computer comes from doing billions of them every second, in exactly the order it was told, without ever getting bored or tired.

The part of the machine that follows instructions is called the processor. Inside the processor there is a small counter that holds the address of the next instruction. The processor reads the instruction at that address, works out what it means, carries it out, and then moves the counter forward. This cycle of fetch, decode and execute repeats for as long as the machine is switched on. When a program asks to jump, the processor simply writes a new address into the counter, and the cycle continues from there.

The processor keeps a handful of values close at hand in places called registers. A register is tiny, holding perhaps eight bytes, but it can be read and written in a fraction of a nanosecond. Most instructions take their inputs from registers and leave their results in registers. When a value is needed that is not in a register, the processor must load it from memory, and when a result must be kept for later, it is stored back to memory.

A program written by a person does not look like this. People write programs in languages that have names for things, loops that repeat, and functions that can be called from many places. Before the processor can run such a program, it must be translated into the plain instructions the processor understands. That translation is the job of a compiler, or of an interpreter that translates a little at a time while the program runs.

Consider a short task: add up the numbers from one to one hundred. A person might write a loop that starts a total at zero and adds each number in turn. The compiler turns this into a few instructions. One register holds the total, another holds the current number. The processor adds the current number to the total, adds one to the current number, compares it with one hundred, and jumps back to the start of the loop if it has not gone past the end. After one hundred trips around the loop, the total is five thousand and fifty, and the program moves on.

Modern processors do not really wait for one instruction to finish before starting the next. They work like a laundry with several machines: while one load is drying, the next is washing and a third is being folded. This is called a pipeline. A processor may have many instructions in flight at once, each at a different stage. It may even guess which way a jump will go and start working on the instructions it expects to come next. When the guess is right, time is saved. When the guess is wrong, the processor throws away the work it did on the wrong path and starts again from the right one.

Many processors today also contain several cores. Each core is a complete processor with its own counter and registers, and each can follow a different program, or a different part of the same program, at the same time. Using several cores well is one of the hard problems of programming, because the parts of a program that run side by side must share their results without getting in each other's way.

When a computer starts, it runs a small program stored in a chip that does not forget its contents when the power is off. That program checks the hardware, finds a disk, and loads a larger program called the operating system. The operating system then takes charge. It decides which programs run on which cores and for how long, it hands out memory, and it lets programs read files and talk to the network without each of them needing to know the details of every device.

Every program that runs under an operating system believes it has the machine mostly to itself. It sees a long, private range of memory addresses and a processor that seems to run only its instructions. In truth the operating system is switching between programs many times each second, saving the registers of one and restoring those of another. The switch happens so quickly and so often that, to a person watching, every program appears to run at once.

Memory, Caches and Why Order Matters

A processor can perform an addition in less than a nanosecond, but fetching a value from main memory can take a hundred times longer. If the processor had to wait for main memory every time it needed a value, it would spend nearly all of its time waiting. To avoid this, computers keep copies of recently used data in caches: small, fast memories that sit between the processor and main memory.

A cache works because programs are predictable in two ways. First, a value that was used a moment ago is likely to be used again soon. A loop counter, for example, is read and written on every trip around the loop. Second, a value that sits next to one just used is likely to be needed next. When a program walks through a list, it reads one element after another in order. Caches take advantage of both habits. They keep recently used values, and when they fetch a value from main memory they bring its neighbours along too, in a block called a cache line.

Most machines have several levels of cache. The first level is the smallest and fastest and belongs to a single core. The second level is larger and a little slower. The third level is larger still and is often shared by all the cores on a chip. A request for data is tried at each level in turn, and only if every cache misses does it travel all the way to main memory. A program whose data fits in the first level cache can run many times faster than one that must keep reaching out to main memory.

This is why the order in which a program touches its data matters so much. Imagine a table of numbers stored row after row. A program that adds up the table by walking along each row reads memory in order, and every cache line it fetches is used completely. A program that adds up the same table column by column jumps from row to row, using one number from each cache line before moving on. Both programs do the same arithmetic and get the same answer, yet the second may be several times slower, because it spends its time waiting for memory rather than computing.

Main memory itself is fast compared with a disk. Reading from a spinning disk means waiting for the right part of the disk to pass under the head, which can take several milliseconds, an eternity for a processor. Solid state drives have no moving parts and answer much faster, but they are still far slower than main memory. Operating systems therefore keep recently read parts of files in spare memory, so that a second read of the same file can be served without touching the disk at all.

All of these layers form a hierarchy. At the top are registers, a few dozen values that can be reached instantly. Below them are the caches, then main memory, then solid state drives, then spinning disks, and finally storage reached over a network. Each step down is larger, cheaper per byte and slower. Good programs are written with the hierarchy in mind: they keep the data they are working on small, they reuse it while it is close at hand, and they read large blocks in order rather than small pieces at random.

)corpus",
R"corpus(There is a second reason to care about memory, beyond speed. Memory is limited. When a program needs more memory than the machine has, the operating system may move parts of it out to disk, and every later touch of those parts becomes painfully slow. Large computations, such as training a model on many examples, are often limited not by how fast the processor can calculate but by how much memory is needed to hold everything at once. Much clever engineering goes into fitting a large job into a small space: storing numbers with fewer bits, throwing away results that can be cheaply recomputed, and splitting the work across many machines so that each holds only a part.

Networks and Packets

When one computer sends a message to another, the message does not travel as a single piece. It is cut into small parcels called packets. Each packet carries a piece of the message together with a label that says where it came from, where it is going, and where it belongs in the whole. The packets travel independently, may take different routes, and may even arrive out of order. The receiving computer puts them back together using their labels.

Cutting messages into packets has several advantages. A long message does not block a shared wire while it is being sent; packets from many conversations can take turns. If one packet is lost or damaged, only that packet needs to be sent again, not the whole message. And because each packet finds its own way, the network can route around a broken link without anyone noticing more than a short delay.

The devices that pass packets along are called routers. A router has several connections and a table that tells it, for each destination, which connection leads closer. When a packet arrives, the router reads its destination, looks it up in the table, and sends the packet out on the right connection. No single router knows the full path from sender to receiver. Each knows only the next step, and the packet reaches its goal by taking one sensible step after another.

Networks promise less than people often assume. A packet may be lost because a router was too busy to keep it. It may be delayed for a long time in a queue. It may be duplicated, or arrive after a packet that was sent later. Programs that need a reliable stream of data therefore use a protocol that numbers every byte, asks the receiver to acknowledge what it has received, and sends again anything that is not acknowledged in time. The protocol also slows down when it sees signs of congestion, so that many senders sharing a link do not overwhelm it together.

Two measures describe how fast a network is. Latency is the time it takes a single small message to reach the other side. Bandwidth is how many bytes per second can flow once the data is moving. A network can have high bandwidth and still feel slow if its latency is high, because every question must wait for its answer before the next one can be asked. For small messages latency dominates; for large transfers bandwidth dominates. A simple model says that sending a message costs a fixed delay plus its size divided by the bandwidth, and this model explains a surprising amount of what people observe.

When many computers work together on one problem, they must exchange data, and the pattern of that exchange matters as much as the speed of each link. Suppose every machine holds a list of numbers and they all need the sum of all the lists. One way is to send everything to a single machine, add it up there, and send the result back. That central machine becomes a bottleneck, because every byte passes through its one connection. A better way arranges the machines in a ring. Each machine passes a piece of its list to its neighbour, which adds its own piece and passes the sum along. After enough steps, every machine holds a part of the total, and a second trip around the ring shares those parts with everyone. Each machine sends and receives about twice the size of its list, no matter how many machines take part, and every link is kept busy at the same time.

Patterns like this are called collective operations. The most common are a broadcast, in which one machine sends the same data to all the others; a gather, in which each machine contributes a piece and everyone ends up with all the pieces; a reduce, in which pieces are combined by addition or another rule; and a scatter, in which a large piece of data is split so that each machine receives one part. Much of the work of making large computations fast lies in choosing the right collective operation and overlapping it with useful computation, so that the network and the processors are never idle at the same time.

What a Compiler Does

A compiler is a program that reads a program written in one language and writes an equivalent program in another, usually one that a processor can run directly. The input is text written for people to read. The output is a long sequence of simple instructions written for a machine. Between the two lies a chain of careful steps.

The first step reads the text and breaks it into words, which compiler writers call tokens. A token may be a name, a number, a symbol such as a plus sign or a bracket, or a keyword of the language. Spaces and comments are usually dropped at this point, because they matter to people but not to the meaning of the program.

The second step arranges the tokens into a tree that shows how they fit together. In the expression two plus three times four, the tree records that the multiplication happens first and its result is added to two. Building this tree is called parsing. If the tokens cannot be arranged into any tree the language allows, the program has a syntax error, and a good compiler says exactly where the trouble is and what it expected to find there.

The third step checks that the program makes sense. Every name must refer to something that has been declared. A function must be called with the right number of arguments. In many languages each value has a type, such as a whole number, a piece of text, or a list of numbers, and the compiler checks that values are used in ways their types allow. Adding a number to a list of names is almost always a mistake, and catching it before the program runs saves a great deal of trouble.

After these checks, the compiler has a complete understanding of the program and begins to improve it. This is called optimisation, although the result is rarely the best possible program; it is simply a better one. The compiler may notice that a value is computed twice and keep the first result. It may see that a calculation inside a loop gives the same answer every time and move it outside. It may replace a call to a small function with the body of the function itself, saving the cost of the call. Each improvement must keep the meaning of the program exactly the same, and proving that it does is the hardest part of a compiler writer's job.

Finally the compiler chooses instructions for the target processor. It decides which values live in registers and which must be stored in memory, arranges the instructions so that the processor's pipeline stays full, and writes out the result. Because different processors have different instructions, a compiler that supports many machines keeps most of its work independent of any one of them and only the last steps are specific to each target.

)corpus",
R"corpus(Large programs are not compiled all at once. They are split into many files, each compiled separately into an object file, and a separate program called a linker joins the object files together. The linker connects each use of a function in one file with its definition in another and lays out the final program in memory. Splitting the work this way means that when one file changes, only that file needs to be compiled again. Even so, compiling a large program can take a long time, and builders use tricks such as precompiled headers, which save the compiler from reading the same large set of declarations again for every file.

Interpreters take a different approach. Instead of translating the whole program ahead of time, an interpreter reads the program and carries out each step as it goes. Interpreters start quickly and make it easy to try things out, but they usually run programs more slowly than compiled code. Many modern systems mix the two ideas: they start by interpreting, watch which parts of the program run most often, and compile just those parts into fast machine instructions while the program is running.

Rivers and the Water Cycle

Almost all the water on Earth has been here for billions of years, and it is always on the move. The sun warms the surface of the oceans, lakes and wet ground, and some of the water rises into the air as invisible vapour. Plants add more, drawing water from the soil through their roots and releasing it through tiny openings in their leaves. The warm, moist air rises, and as it rises it cools. Cool air cannot hold as much vapour as warm air, so the vapour gathers into tiny droplets around specks of dust and salt, and a cloud is born.

Inside a cloud the droplets bump into one another and join together. When they grow heavy enough, they fall as rain, or as snow if the air is cold enough. Some of that water lands in the sea and begins the journey again at once. Some falls on land, where it has three choices. It can soak into the ground, it can run off across the surface, or it can return to the air. The balance between these depends on the soil, the slope of the land, the plants that cover it, and how hard and how long it rains.

Water that runs off the land gathers in small channels, and the small channels join to form streams. Streams join to form rivers, and rivers carry the water back towards the sea. The area of land that drains into one river is called its basin. A great river may drain a basin larger than many countries, collecting water from thousands of streams that begin on distant hills.

A river is never still, and it shapes the land it crosses. In the mountains, where the slope is steep, a young river runs fast and carries stones and sand that scrape at its bed, cutting deep, narrow valleys. Lower down, where the land is flatter, the river slows. It can no longer carry all the material it picked up, so it drops the heaviest pieces first and the finest mud last. Slow rivers wander from side to side in wide loops. The water on the outside of each bend moves faster and wears away the bank, while the water on the inside moves slowly and leaves sand behind, so over many years the loops drift across the valley floor.

When a river floods, it spreads over the flat land beside it and leaves a thin layer of fine mud. Over centuries these layers build up into rich, deep soil. This is why so many early farming communities grew up beside rivers: the floods that threatened them also fed their fields. People learned to read the river, to expect its rise in a particular season, and to plant their crops after the water went down.

Water that soaks into the ground moves much more slowly than water in a river. It seeps down through soil and cracks in the rock until it reaches a layer where every space is already full. The top of this saturated layer is called the water table. Below it, water creeps sideways through the rock, sometimes for thousands of years, before it comes out again in a spring, feeds a river from below, or is drawn up by a well. In dry seasons, many rivers keep flowing only because this slow underground store keeps topping them up.

Every part of the cycle is connected. Cutting down a forest changes how much water returns to the air and how fast rain runs off the hills. Paving a city means rain can no longer soak in, so streams rise quickly after a storm and fall low in dry weather. Drawing too much water from wells lowers the water table and can dry up springs many miles away. Understanding the water cycle is therefore not only a question of science but also one of care: the water we use today is the same water that others will need tomorrow.

The Life of a Forest

A forest looks calm, but it is full of competition and cooperation. Every tree is reaching for light. The tallest trees spread their crowns wide and take most of the sunshine, leaving the floor below in shade. Young trees that sprout in that shade grow slowly, sometimes for decades, waiting for a gap to open above them. When an old tree falls in a storm, a pool of light reaches the ground, and the young trees beneath race upwards to fill the gap. The forest is always renewing itself in this patchwork way, one fallen giant at a time.

Trees make their food from air, water and light. In their leaves, a green substance captures the energy of sunlight and uses it to join carbon from the air with water from the soil, making sugar and releasing oxygen. The sugar feeds the tree and is built into wood, leaves and roots. A large tree stores a great deal of carbon in its trunk, and a forest as a whole can hold more carbon than the air above it.

Below the ground there is another world. The roots of most trees are wrapped in fine threads of fungi. The fungi reach far into the soil, much further than the roots could alone, and gather water and minerals such as phosphorus. In return, the tree feeds the fungi with sugar. The threads of one fungus may connect the roots of many trees, and some studies suggest that sugar and chemical signals can pass between trees along these links, although how important this is remains a subject of lively debate.

Leaves that fall each autumn do not simply pile up. An army of small creatures sets to work on them: worms, beetles, mites, and countless bacteria and fungi. They break the leaves into smaller and smaller pieces until what remains becomes part of the soil. The nutrients that the tree placed in its leaves are released and taken up by roots again. Nothing in a healthy forest is wasted; the waste of one living thing is the food of another.

Forests are layered like a building. At the top is the canopy, where most of the light is caught and where many birds and insects live. Beneath it is the understory of smaller trees and shrubs, then the herbs and ferns of the forest floor, and finally the leaf litter and the soil. Each layer has its own climate. The canopy is sunny, windy and dry; the floor is shaded, still and damp. Animals and plants specialise in the layer that suits them, and so a forest can hold far more kinds of life than an open field of the same size.

Fire plays a surprising part in many forests. In some dry regions, small fires sweep through every few years, burning dead wood and undergrowth but leaving the thick-barked old trees alive. Some trees even hold their seeds in hard cones that open only after the heat of a fire, so that their young can sprout in ash-rich soil with plenty of light. When people stop every small fire, dead wood builds up, and the next fire, when it comes, may be hot enough to kill the whole forest.

)corpus",
R"corpus(A forest changes over long periods too. Bare ground left by a flood or a landslide is first covered by grasses and fast-growing plants. These are followed by shrubs, then by trees that like full sun, and finally by trees that can grow in the shade of others. This slow sequence is called succession. It may take centuries to run its course, and it is often interrupted by storms, fires or people, so that real landscapes are a mosaic of patches at different stages, each with its own mix of plants and animals.

Weather and Clouds

Weather is the state of the air at one place and one time: how warm it is, how wet, how windy, and whether rain is falling. Climate is the pattern of weather over many years. A single cold week says little about climate, in the same way that a single bad day says little about a person's whole life.

Nearly all weather is driven by uneven heating. The sun warms the equator more than the poles, the land more quickly than the sea, and a dark field more than a pale one. Warm air is lighter than cool air, so it rises, and cooler air flows in beneath it to take its place. That flow is wind. On a sunny day at the coast, the land warms faster than the water, air rises over the land, and a cool breeze blows in from the sea. At night the pattern reverses, and a gentle breeze blows from the land out to sea.

On the scale of the whole planet, the same idea produces great belts of wind. Because the Earth spins, moving air is turned aside rather than flowing straight from high pressure to low. In the northern half of the world it curves to the right, in the southern half to the left. This is why large storms spin, and why winds tend to blow along the lines of equal pressure on a weather map rather than straight across them.

Clouds tell the story of the air. Flat sheets of grey cloud form when a broad layer of air is lifted slowly, often ahead of a warm front, and they may bring long periods of light rain. Puffy white clouds with flat bottoms form on sunny days when warm bubbles of air rise from the ground; the flat base marks the height at which the rising air has cooled enough for its vapour to condense. If the air is unstable, those bubbles keep rising and the clouds tower upward, growing into thunderclouds that may reach the top of the lower atmosphere and spread out into the shape of an anvil. High, thin, feathery clouds are made of ice crystals and often appear a day or so before the weather changes.

A thunderstorm is a small engine. Warm, moist air rushes upward inside it, and as the vapour condenses it releases heat, which makes the air rise even faster. Raindrops and hailstones are carried up and down, colliding with ice crystals, and these collisions separate electric charge. When the difference in charge grows large enough, it is released in a flash of lightning, which heats the air so suddenly that it expands with the crack and rumble we call thunder. Because light travels much faster than sound, counting the seconds between the flash and the thunder gives a rough idea of how far away the storm is: about three seconds for every kilometre.

Forecasting the weather means solving the equations that describe how air moves, warms, cools and carries water. The atmosphere is divided into a grid of boxes, the present state of each box is estimated from measurements taken by weather stations, balloons, ships, aircraft and satellites, and powerful computers step the equations forward in time. Small errors in the starting picture grow as the forecast runs, which is why a forecast for tomorrow is usually good and one for two weeks ahead is little better than a guess. Forecasters therefore run the same model many times from slightly different starting points. If the runs agree, the forecast is confident; if they spread apart, the weather is genuinely hard to predict.

Bees and Flowers

A flower is an advertisement. Its bright petals, its scent and its sweet nectar all exist to attract visitors, and the most important visitors are bees. As a bee moves from flower to flower in search of food, grains of pollen stick to the fine hairs on its body. Some of those grains rub off on the next flower it visits, and if that flower is of the same kind, the pollen can fertilise it, allowing it to make seeds. The bee gets a meal; the plant gets a messenger. Neither could do as well without the other.

A honey bee colony is a family of many thousands of workers, a single queen and, in summer, a few hundred males. The queen lays the eggs, sometimes well over a thousand in a day. The workers do everything else, and what a worker does depends on her age. A young bee cleans the cells of the comb and feeds the growing young. As she grows older she builds new comb from wax made in her own body, guards the entrance, and finally, in the last weeks of her life, flies out to gather nectar, pollen and water.

Bees that find a rich patch of flowers share the news. Returning to the hive, a forager performs a dance on the vertical face of the comb. In a waggle dance she runs in a straight line while shaking her body, then loops back and repeats. The direction of the straight run, measured against straight up, shows the direction of the flowers measured against the direction of the sun. The length of the run shows how far away they are. Other bees follow the dancer, learn the message, and fly out to the same place. In this way a colony can send most of its foragers to the best flowers within a few kilometres.

Nectar is mostly water with sugar dissolved in it. To turn it into honey, the bees pass it from mouth to mouth, adding enzymes that split the sugar into simpler forms, and then spread it in the cells of the comb. They fan their wings to blow warm air across the cells until most of the water has evaporated. When the honey is thick enough, they seal each cell with a cap of wax. Honey stored this way keeps almost forever, because it is too thick and too sweet for most microbes to grow in it.

Honey bees are only one kind of bee among many thousands. Most bees live alone. A female solitary bee digs a small tunnel in the ground or finds a hollow stem, stocks it with a ball of pollen and nectar, lays an egg on it, and seals it up. She never meets her young. Bumblebees live in small colonies and are able to fly in cooler weather than honey bees, because they can warm their flight muscles by shivering. Some flowers, such as tomatoes, release their pollen only when shaken at the right frequency, and bumblebees are experts at this buzzing.

Many of the fruits and vegetables people eat depend on bees and other insects to carry pollen. When bees are scarce, apple trees set fewer apples, and the fruit that does form may be small or misshapen. Bees face many pressures: the loss of wild flowers, diseases and parasites, and chemicals used to protect crops. Simple steps help them, such as leaving patches of wild flowers along the edges of fields, planting a range of flowers that bloom from spring to autumn, and leaving some bare ground and old stems where solitary bees can nest.

The Moon and the Tides

The Moon is our nearest neighbour in space, about four hundred thousand kilometres away. It has no air and no liquid water, so its surface changes very slowly. The dark patches we see from Earth are wide plains of old lava that flooded great basins long ago. The bright areas are older highlands, covered in craters left by rocks that struck the Moon over billions of years. With no wind or rain to wear them away, many of those craters look almost as sharp today as when they were made.

The Moon always shows the same face to the Earth. This is not a coincidence. Long ago the Moon spun faster, but the pull of the Earth stretched it slightly, and the friction of that stretching slowed its spin until one turn on its axis took exactly as long as one trip around the Earth. Many moons in the solar system are locked in the same way to the planets they circle.

)corpus",
R"corpus(The Moon does not make its own light; it shines by reflecting sunlight. As it travels around the Earth, we see different amounts of its sunlit half. When the Moon lies between the Earth and the Sun, its lit side faces away from us and we see almost nothing: this is the new moon. A few days later a thin crescent appears in the evening sky after sunset. The lit part grows night by night to a half, and then to a full moon, when the Moon is on the far side of the Earth from the Sun and we see its whole bright face. Then the lit part shrinks again, and the whole cycle takes about twenty-nine and a half days.

The Moon's gravity pulls on the whole Earth, but it pulls a little harder on the side that is nearer to it and a little less on the far side. The oceans are free to move, and this difference in pull stretches them into two bulges, one facing the Moon and one on the opposite side of the Earth. As the Earth turns, each coast passes through both bulges, so most places see two high tides and two low tides a little more than a day apart. The tides come about fifty minutes later each day, because by the time the Earth has turned once, the Moon has moved a little further along its path.

The Sun raises tides as well, a little less than half as strong as those of the Moon. When the Sun and Moon line up, at new moon and full moon, their pulls add together and the tides are larger than usual; these are spring tides, although they have nothing to do with the season. When the Sun and Moon pull at right angles, at the half moons, the tides are smaller; these are neap tides. The shape of a coast can magnify the tides greatly. In some long, narrow bays the water rises and falls by more than ten metres, while on some open coasts the difference is less than a metre.

Tides also slowly change the Earth and the Moon. The friction of moving oceans acts as a brake on the Earth's spin, making each day very slightly longer over the ages. In return, the Moon is gently pushed outward and moves a few centimetres further from the Earth every year. Lines of growth in ancient corals suggest that, hundreds of millions of years ago, a year held more days than it does now, each of them a little shorter than today.

Bread and Yeast

Bread is one of the oldest prepared foods, and at its simplest it needs only flour, water, salt and yeast. The magic lies in what happens when these are mixed and left to rest. Flour contains starch and two proteins that, when wetted and worked, link together into a stretchy network called gluten. Yeast is a living fungus, a single cell too small to see, which feeds on sugars and gives off carbon dioxide gas and a little alcohol. The gas is trapped in the gluten network as bubbles, and the dough rises.

Kneading the dough stretches and folds the gluten strands, lining them up and making the network stronger and more elastic. A well kneaded dough can be pulled thin enough to let light through without tearing. Some bakers prefer to knead very little and instead give the dough a long rest, during which the gluten develops on its own, helped by occasional folding. Both methods aim for the same thing: a dough strong enough to hold gas, yet soft enough to expand.

Time and temperature are the baker's main controls. Yeast works faster when it is warm and slower when it is cool. A dough left in a warm kitchen may double in size in an hour, while the same dough in a cold room may take all night. Slow rising has an advantage beyond convenience. While the yeast works, enzymes in the flour break starch into sugars and proteins into smaller pieces, and these build the flavour of the bread. Bread made from a slow, cool rise often tastes deeper and more complex than bread rushed through in a warm oven.

Before there was packaged yeast, bakers kept a starter: a mixture of flour and water in which wild yeasts and bacteria lived together. Each day part of the starter was used to raise bread, and the rest was fed with fresh flour and water to keep it alive. The bacteria in a starter make acids that give sourdough bread its tang and help it keep longer. A well tended starter can live for many years, and some bakeries are proud of starters said to be older than anyone who works there.

When the shaped loaf goes into a hot oven, several things happen quickly. The gas in the bubbles expands, and the yeast, warmed, works furiously for a few minutes before the heat kills it. Water turns to steam and swells the loaf further. This sudden rise is called oven spring. Then the gluten and starch set, fixing the bubbles in place as the soft crumb inside the loaf. On the surface, where the dough is hottest and driest, sugars and proteins react and turn brown, making the crust and much of the smell that fills a kitchen when bread is baking.

Bakers often score the top of a loaf with a sharp blade before it goes into the oven. The cut gives the loaf a place to open as it springs, so that it rises evenly instead of bursting at a weak point on its side. Many bakers also add steam to the oven at the start of baking. The moist air keeps the surface soft for the first few minutes, allowing the loaf to expand fully before the crust hardens, and it helps produce a thin, glossy, crackling crust.

Baking rewards patience and attention more than strict rules. Flour from one field differs from flour from another, kitchens vary in warmth, and the same recipe can behave differently from one day to the next. Experienced bakers learn to judge a dough by how it looks and feels: whether it has grown enough, whether it springs back slowly when pressed with a finger, whether its surface is smooth and tight. Like many crafts, baking is a conversation between the maker and the material.

How Machines Learn From Examples

Some problems are easy to describe but hard to solve with ordinary instructions. Nobody can write down a precise rule for telling a photograph of a cat from a photograph of a dog, yet a small child learns to do it from a few examples. Machine learning takes a similar approach. Instead of writing the rule by hand, we choose a flexible model with many adjustable numbers, show it many examples, and let a simple procedure adjust the numbers until the model gives good answers.

The adjustable numbers are called parameters or weights. A small model may have a few thousand of them; a large one may have billions. At the start they are set to small random values, so the model's answers are no better than guesses. To improve it, we need a way to measure how wrong it is. This measure is called the loss. For a model that predicts the next letter of a text, a common loss is the average surprise the model feels at each letter that actually comes next. A model that spreads its guesses evenly over two hundred and fifty six possible letters has a loss of about five and a half; a model that has learned the spelling and grammar of a language has a much lower one.

Training lowers the loss step by step. For a batch of examples, the model makes its predictions and the loss is computed. Then, working backwards through the calculation, we find how the loss would change if each parameter were nudged a little up or down. This collection of slopes is called the gradient, and the method of computing it efficiently is called backpropagation. Each parameter is then moved a small distance in the direction that lowers the loss. The size of that step is set by the learning rate. Too small, and learning crawls; too large, and the parameters jump around without settling.

)corpus",
R"corpus(Repeating this many thousands of times, with a fresh batch of examples at each step, slowly shapes the model. Early in training the loss usually falls quickly, as the model learns the most common patterns, such as which letters appear most often. Later it falls more slowly, as the model picks up rarer and subtler patterns. Plotting the loss against the number of steps is the simplest way to see whether training is working, and an engineer learns a great deal from the shape of that curve.

A model can also learn its examples too well. If it memorises the exact examples it has seen, it may do poorly on new ones. To catch this, some examples are held back and never used for training. From time to time the model is tested on these held-out examples. While the loss on both sets falls together, the model is learning general patterns. If the training loss keeps falling but the held-out loss starts to rise, the model has begun to memorise, and it is time to stop, to gather more data, or to make the model simpler.

Large models and large collections of examples take a long time to train on a single machine, so the work is often spread across many. In the simplest arrangement, every machine holds a full copy of the model and works on a different batch of examples. After each step the machines add up their gradients, so that every copy makes the same update and the copies stay identical. When the model itself is too large to fit on one machine, its parameters, their gradients and the extra numbers kept by the optimiser can be split into pieces, with each machine holding only a share and fetching the rest from its neighbours when it needs them. The arithmetic is the same as on one machine; only the place where each number lives has changed. Done carefully, many machines together reach the same result as one machine would, only much sooner.
)corpus",
};
// clang-format on

}  // namespace

const std::string& embedded_corpus() {
  static const std::string corpus = [] {
    std::string all;
    for (const char* piece : kPieces) all += piece;
    return all;
  }();
  return corpus;
}

}  // namespace mtrain::trainer
